; Tags for Swift (see python-tags.scm for the capture convention). class_declaration covers
; class, struct, enum, actor and extension; an extension is a scope named after its type.

(class_declaration "struct" name: (type_identifier) @name) @definition.struct
(class_declaration "enum" name: (type_identifier) @name) @definition.enum
(class_declaration "extension" name: (user_type (type_identifier) @name)) @scope
(class_declaration name: (type_identifier) @name) @definition.class
(protocol_declaration name: (type_identifier) @name) @definition.interface
(function_declaration
  name: (simple_identifier) @name
  [(user_type) (optional_type)]? @declared.type) @definition.function
(protocol_function_declaration name: (simple_identifier) @name) @definition.function @declaration
(init_declaration "init" @name) @definition.method
(deinit_declaration "deinit" @name) @definition.method
(class_body
  (property_declaration
    name: (pattern bound_identifier: (simple_identifier) @name)
    (type_annotation (_) @declared.type)?) @definition.field)
(class_body
  (property_declaration
    name: (pattern bound_identifier: (simple_identifier) @name)
    value: (call_expression (simple_identifier) @declared.type)) @definition.field)
(source_file
  (property_declaration
    name: (pattern bound_identifier: (simple_identifier) @name)
    value: (call_expression (simple_identifier) @declared.type)) @definition.variable)
(source_file
  (property_declaration
    name: (pattern bound_identifier: (simple_identifier) @name)
    (type_annotation (_) @declared.type)?) @definition.variable)
(enum_entry name: (simple_identifier) @name) @definition.constant

(control_transfer_statement
  result: [(call_expression (simple_identifier) @returned) (simple_identifier) @returned])

; --- references -------------------------------------------------------------------------------

(inheritance_specifier inherits_from: (user_type (type_identifier) @name) @reference.inherit)

(call_expression (simple_identifier) @name) @reference.call
; the grammar reads `total + item.price()` as `(total + item).price()`: the receiver is the
; right operand (these come first, so that they win over the plain patterns below)
(call_expression
  (navigation_expression
    target: [(additive_expression rhs: (_) @qualifier) (multiplicative_expression rhs: (_) @qualifier)]
    suffix: (navigation_suffix suffix: (simple_identifier) @name))) @reference.call
(navigation_expression
  target: [(additive_expression rhs: (_) @qualifier) (multiplicative_expression rhs: (_) @qualifier)]
  suffix: (navigation_suffix suffix: (simple_identifier) @name)) @reference.other
(call_expression
  (navigation_expression
    target: (_) @qualifier
    suffix: (navigation_suffix suffix: (simple_identifier) @name))) @reference.call
(call_expression
  (navigation_expression
    target: (call_expression (simple_identifier) @receiver.type) @qualifier
    suffix: (navigation_suffix suffix: (simple_identifier) @name))) @reference.call
(navigation_expression
  target: (_) @qualifier
  suffix: (navigation_suffix suffix: (simple_identifier) @name)) @reference.other
(type_identifier) @reference.type
(simple_identifier) @reference.other

((simple_identifier) @ignore (#match? @ignore "^[$][0-9]+$"))  ; a closure's `$0`: never a definition
(import_declaration) @ignore.inside
(assignment
  target: (directly_assignable_expression
    (navigation_expression
      target: (self_expression)
      suffix: (navigation_suffix suffix: (simple_identifier) @ignore))))
(value_argument_label (simple_identifier) @ignore)
(parameter external_name: (simple_identifier) @ignore)
(type_parameter (type_identifier) @ignore)

; --- imports ------------------------------------------------------------------------------------

; a Swift import brings every public name of the module (a folder of the project, or not)
(import_declaration (identifier) @import.module) @import.star

; --- locals ---------------------------------------------------------------------------------------

(parameter name: (simple_identifier) @local.definition)
(parameter name: (simple_identifier) @local.definition [(user_type) (optional_type)] @local.type)
(property_declaration name: (pattern bound_identifier: (simple_identifier) @local.definition))
(property_declaration
  name: (pattern bound_identifier: (simple_identifier) @local.definition)
  (type_annotation (_) @local.type))
(property_declaration
  name: (pattern bound_identifier: (simple_identifier) @local.definition)
  value: (call_expression [(simple_identifier) (navigation_expression)] @local.type))
(for_statement item: (pattern (simple_identifier) @local.definition) collection: (_) @local.iterable)
(lambda_literal) @local.scope
; every name a pattern binds (`if let v`, `guard let w`, `catch let e`, `case .some(let z)`),
; a tuple's (`let (a, b) = …`, `for (i, x) in …`) and a closure's parameters
(_ bound_identifier: (simple_identifier) @local.definition)
(property_declaration name: (pattern (pattern (simple_identifier) @local.definition)))
(for_statement item: (pattern (pattern (simple_identifier) @local.definition)))
(lambda_parameter name: (simple_identifier) @local.definition)
; a closure given to a collection's method: `$0` is an element, and `$1` too where there is
; one (`sorted(by:)`, `min(by:)`); for reduce, `$1` only (`#set!` before the predicates: after
; one, tree-sitter's Python binding corrupts memory compiling the query)
(call_expression
  (navigation_expression
    target: (_) @local.iterable suffix: (navigation_suffix suffix: (simple_identifier) @_method))
  (call_suffix
    [(lambda_literal) @local.implicit
     (value_arguments (value_argument value: (lambda_literal) @local.implicit))])
  (#set! implicit "$0 $1")
  (#match? @_method "^(map|compactMap|flatMap|forEach|filter|first|last|contains|allSatisfy|firstIndex|lastIndex|drop|prefix|removeAll|partition|sorted|sort|min|max)$"))
(call_expression
  [(navigation_expression
     target: (_) @local.iterable suffix: (navigation_suffix suffix: (simple_identifier) @_method))
   (call_expression
     (navigation_expression
       target: (_) @local.iterable suffix: (navigation_suffix suffix: (simple_identifier) @_method)))]
  (call_suffix (lambda_literal) @local.implicit)
  (#set! implicit "$1")
  (#eq? @_method "reduce"))
