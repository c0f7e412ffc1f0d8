"""The run stage: a plan's cells run on their engines (``cells``, ``schedule``), each
runner watched to its end (``watch``), user repros staged beside the harness
(``staging``), progress shown (``progress``) and what the machine could not decide
summed up (``outlook``)."""
