"""Every process awf-mcp starts: Bash commands, background jobs, stdio upstreams.

- :mod:`.children` is the one spawn path (:func:`.children.kept_command`): a keeper that owns
  the child's process group, reports its exit and leaves nothing behind;
- :mod:`.containment` is the sandbox that path wraps every child in (the policy, its plan for
  one child, the bubblewrap and Landlock backends, the network proxy);
- :mod:`.childenv` builds a child's environment (secrets dropped, ``env_pass`` kept);
- :mod:`.upstreamprocess` starts a stdio upstream server through that path.

Standard library only, plus the public face: the keeper and :mod:`.containment.kernel` must
start without the rest of awf-mcp.
"""
