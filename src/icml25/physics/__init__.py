"""Papers of the `physics` domain; one subpackage per paper."""
