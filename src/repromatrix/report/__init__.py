"""The page: a store read through its index (``load``), turned into the site model and
its markup (``render``, ``stacks``, ``answers``, ``expect``, ``markup``) and written as
static files (``chunks``, ``feed``, ``raw``, ``fresh``), rewriting only what changed
(``state``)."""
