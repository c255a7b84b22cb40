"""After-the-fact review of trajectories: triggers, compression, reviewers, applying results."""
