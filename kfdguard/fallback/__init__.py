"""The kernel-fallback policy: which installed kernel can run compute, and when to boot it once.

policy.py is pure (facts and history in, a recommendation and decisions out);
apply.py changes the boot loader through its own tools and keeps the history.
"""
