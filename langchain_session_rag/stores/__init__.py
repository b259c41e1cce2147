"""stores."""
