"""The four memories: conversation, long-term, working and episodic."""
