"""Papers of the `agents` domain; one subpackage per paper."""
