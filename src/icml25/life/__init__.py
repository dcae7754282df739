"""Papers of the `life` domain; one subpackage per paper."""
