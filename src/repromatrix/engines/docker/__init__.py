"""The docker engine: ``engine`` (prepare, start, release), ``build`` (images from
rendered Dockerfiles, classic builder), ``daemon`` (connection, labels, cleanup of
dead runs' containers) and ``registry`` (push content-hash images, pull them back)."""
