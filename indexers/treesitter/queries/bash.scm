; Definitions for the chunker (see python.scm for the capture convention).

(function_definition
  name: (word) @name) @definition.function
