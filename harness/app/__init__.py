"""The command line: the console scripts (`entry`), the click commands (`cli`), and
`exits`, the one module that decides what exit status a command ends with."""
