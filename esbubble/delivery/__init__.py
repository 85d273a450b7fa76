"""What happens to a bubble before it becomes a prompt: expansion, repair, assembly, citations. Pure."""
