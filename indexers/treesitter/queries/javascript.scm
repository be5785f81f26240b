; Definitions for the chunker (see python.scm for the capture convention).
; `export` wrappers, decorators and JSDoc above are attached by the chunker.
; inherits: ecmascript

(class_declaration
  name: (identifier) @name) @definition.class

(field_definition
  property: [(property_identifier) (private_property_identifier)] @name
  value: [(arrow_function) (function_expression)]) @definition.method
