# The single source of the project version: build.sbt reads it for the jar, and the jar's
# version resource is compared against it at first use.
__version__ = "0.1.0"
