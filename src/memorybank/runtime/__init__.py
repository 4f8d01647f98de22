"""Runtime plumbing every concept uses: sync/async primitives, write combining, logging."""
