"""`repromatrix check`: an environment's known bugs and the smallest upgrade, from records.

environment (inputs) -> records (rows) -> decide (pure) -> text or JSON; candidates from the
compatibility table.
"""
