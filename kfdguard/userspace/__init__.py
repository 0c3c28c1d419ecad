"""What the installed userspace can run: code objects, compute stacks, their environment.

``targets`` names gfx targets and decides compatibility, ``bundle`` parses
clang offload bundles, ``elf`` finds them in ELF files, ``scan`` lists the
targets a file, wheel or directory carries, ``probe`` finds the installed
stacks under a Root, ``assess`` judges them per GPU (pure), ``cli`` is the
``kfdguard targets`` command. Nothing here is imported on the boot path.
"""
