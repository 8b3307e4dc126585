"""A helper module a host script imports from its own folder, as `python SCRIPT` allows."""


def banner(what: str) -> None:
    print(f"== {what} ==")
