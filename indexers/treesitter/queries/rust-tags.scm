; Tags for Rust (see python-tags.scm for the capture convention). `impl Type` and
; `impl Trait for Type` are scopes named after Type, so their functions are "Type.method";
; a trait implementation is a base of the type.

(function_item
  name: (identifier) @name
  return_type: (_)? @declared.type) @definition.function
(function_signature_item
  name: (identifier) @name
  return_type: (_)? @declared.type) @definition.function @declaration
(struct_item name: (type_identifier) @name) @definition.struct
(union_item name: (type_identifier) @name) @definition.struct
(enum_item name: (type_identifier) @name) @definition.enum
(trait_item name: (type_identifier) @name) @definition.trait
(type_item name: (type_identifier) @name) @definition.type
(mod_item name: (identifier) @name body: (declaration_list)) @definition.module
(macro_definition name: (identifier) @name) @definition.macro
(const_item name: (identifier) @name type: (_)? @declared.type) @definition.constant
(static_item name: (identifier) @name type: (_)? @declared.type) @definition.constant
(field_declaration name: (field_identifier) @name type: (_) @declared.type) @definition.field
(enum_variant name: (identifier) @name) @definition.constant

(impl_item
  type: [(type_identifier) @name
         (generic_type type: (type_identifier) @name)
         (scoped_type_identifier name: (type_identifier) @name)
         (generic_type type: (scoped_type_identifier name: (type_identifier) @name))]) @scope

; --- references -------------------------------------------------------------------------------

(impl_item
  trait: [(type_identifier) @name
          (generic_type type: (type_identifier) @name)
          (scoped_type_identifier path: (_) @qualifier name: (type_identifier) @name)]
  @reference.inherit)
(trait_bounds [(type_identifier) @name (scoped_type_identifier path: (_) @qualifier name: (_) @name)]
  @reference.inherit)

(call_expression function: (identifier) @name) @reference.call
(call_expression
  function: (field_expression value: (_) @qualifier field: (field_identifier) @name)) @reference.call
(call_expression
  function: (scoped_identifier path: (_) @qualifier name: (identifier) @name)) @reference.call
(call_expression
  function: (generic_function
    function: [(identifier) @name
               (scoped_identifier path: (_) @qualifier name: (identifier) @name)
               (field_expression value: (_) @qualifier field: (field_identifier) @name)]))
  @reference.call
(macro_invocation macro: (identifier) @name) @reference.call
; inside a macro's arguments (token trees): x.method(…) and x.field
(token_tree (identifier) @qualifier . "." . (identifier) @name . (token_tree)) @reference.call
(token_tree (identifier) @qualifier . "." . (identifier) @name) @reference.other
(struct_expression name: (type_identifier) @name) @reference.call
(struct_expression
  name: (scoped_type_identifier path: (_) @qualifier name: (type_identifier) @name)) @reference.call

(type_identifier) @reference.type
(scoped_type_identifier path: (_) @qualifier name: (type_identifier) @name) @reference.type
(identifier) @reference.other
(scoped_identifier path: (_) @qualifier name: (identifier) @name) @reference.other
(field_expression value: (_) @qualifier field: (field_identifier) @name) @reference.other

(use_declaration) @ignore.inside
(type_parameter name: (type_identifier) @ignore)
(field_initializer field: (field_identifier) @ignore)

; --- imports ------------------------------------------------------------------------------------

(use_declaration
  argument: (scoped_identifier path: (_) @import.module name: (identifier) @import.name)) @import
(use_declaration
  argument: (use_as_clause
    path: (scoped_identifier path: (_) @import.module name: (identifier) @import.name)
    alias: (identifier) @import.alias)) @import
(use_declaration
  argument: (scoped_use_list
    path: (_) @import.module
    list: (use_list
      [(identifier) @import.name
       (use_as_clause path: (identifier) @import.name alias: (identifier) @import.alias)]))) @import
(use_declaration argument: (use_wildcard (_) @import.module) @import.star) @import
(use_declaration argument: (identifier) @import.module) @import

; --- locals ---------------------------------------------------------------------------------------

(parameter pattern: (identifier) @local.definition type: (_) @local.type)
(let_declaration pattern: (identifier) @local.definition)
(let_declaration pattern: (identifier) @local.definition type: (_) @local.type)
(let_declaration
  pattern: (identifier) @local.definition
  value: [(call_expression function: (_) @local.type)
          (struct_expression name: (_) @local.type)])
; the names a pattern binds, however nested: `(a, b)`, `Some(z)` (not `Some`),
; `Point { x, y: yy }`, `[first, rest @ ..]`, `&v`, `ref r`, `mut m`
(tuple_pattern (identifier) @local.definition)
(tuple_struct_pattern "(" (identifier) @local.definition)
(field_pattern name: (shorthand_field_identifier) @local.definition)
(field_pattern pattern: (identifier) @local.definition)
(slice_pattern (identifier) @local.definition)
(captured_pattern . (identifier) @local.definition)
(reference_pattern (identifier) @local.definition)
(ref_pattern (identifier) @local.definition)
(mut_pattern (identifier) @local.definition)
(for_expression pattern: (identifier) @local.definition value: (_) @local.iterable)
(closure_parameters (identifier) @local.definition)
(closure_expression) @local.scope
