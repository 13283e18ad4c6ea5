"""One module per export format, each with one ``Writer`` subclass decorated with ``registry.register``;
``registry.writers()`` imports every module here, so adding a format is adding a module."""
