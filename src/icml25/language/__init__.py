"""Papers of the `language` domain; one subpackage per paper."""
