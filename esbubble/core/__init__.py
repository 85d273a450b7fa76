"""The pure core: candidates in, a bubble and its trace out (scoring, gates, selection). No I/O."""
