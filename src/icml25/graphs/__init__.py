"""Papers of the `graphs` domain; one subpackage per paper."""
