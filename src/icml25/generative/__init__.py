"""Papers of the `generative` domain; one subpackage per paper."""
