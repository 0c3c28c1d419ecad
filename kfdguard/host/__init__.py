"""host: the machine seam. Root (every absolute path), System (reads and the writes enforce
makes), the one subprocess runner, atomic files."""
