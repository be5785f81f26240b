; Definitions for the chunker (see python.scm for the capture convention).
; Used for both typescript and tsx. Interfaces, enums and namespaces count as classes;
; type aliases stay module code.
; inherits: ecmascript

(class_declaration
  name: (type_identifier) @name) @definition.class

(abstract_class_declaration
  name: (type_identifier) @name) @definition.class

(interface_declaration
  name: (type_identifier) @name) @definition.class

(enum_declaration
  name: (identifier) @name) @definition.class

(internal_module
  name: [(identifier) (nested_identifier)] @name) @definition.namespace

(function_signature
  name: (identifier) @name) @definition.function

(abstract_method_signature
  name: [(property_identifier) (private_property_identifier)] @name) @definition.method

(public_field_definition
  name: [(property_identifier) (private_property_identifier)] @name
  value: [(arrow_function) (function_expression)]) @definition.method
