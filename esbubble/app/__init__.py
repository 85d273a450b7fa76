"""The application layer: one run, delivery over a store, batches, evaluation, reports and the CLI."""
