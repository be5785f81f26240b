; Definitions for the chunker (see python.scm for the capture convention).
; Only braced namespaces contain their declarations; `namespace X;` stays module code.

(namespace_definition
  name: (namespace_name) @name
  body: (compound_statement)) @definition.namespace

(class_declaration
  name: (name) @name) @definition.class

(interface_declaration
  name: (name) @name) @definition.class

(trait_declaration
  name: (name) @name) @definition.class

(enum_declaration
  name: (name) @name) @definition.class

(function_definition
  name: (name) @name) @definition.function

(method_declaration
  name: (name) @name) @definition.method
