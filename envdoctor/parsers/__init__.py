"""Pure parsers: text of real tool outputs and files in, typed values out; garbage in, None out."""
