"""A plain script as a repro (``plain``, with the ``_wrapper.py`` it runs in) and a
repro exported as one file for upstream reports (``standalone``, framed by
``_one_file.py``). The underscore files run on the stack's side (``_installed.py``: what a
local interpreter has installed); the host never imports them."""
