//! Configuration: file, environment and command-line, merged in that order.
