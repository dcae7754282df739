"""Papers of the `rl` domain; one subpackage per paper."""
