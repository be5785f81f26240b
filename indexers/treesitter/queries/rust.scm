; Definitions for the chunker (see python.scm for the capture convention).
; `impl Type` and `impl Trait for Type` are classes named after Type, so their
; functions become "Type.method". Attributes and doc comments above are attached.

(function_item
  name: (identifier) @name) @definition.function

(function_signature_item
  name: (identifier) @name) @definition.function

(struct_item
  name: (type_identifier) @name) @definition.class

(enum_item
  name: (type_identifier) @name) @definition.class

(union_item
  name: (type_identifier) @name) @definition.class

(trait_item
  name: (type_identifier) @name) @definition.class

(mod_item
  name: (identifier) @name
  body: (declaration_list)) @definition.namespace

(impl_item
  type: [
    (type_identifier) @name
    (generic_type type: (type_identifier) @name)
    (scoped_type_identifier name: (type_identifier) @name)
    (generic_type type: (scoped_type_identifier name: (type_identifier) @name))
  ]) @definition.class

(macro_definition
  name: (identifier) @name) @definition.function
