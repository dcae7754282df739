"""Papers of the `robustness` domain; one subpackage per paper."""
