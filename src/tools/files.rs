//! `read_file and write_file`.
