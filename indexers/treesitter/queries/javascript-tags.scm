; Tags for JavaScript (see python-tags.scm for the capture convention).
; inherits: ecmascript-tags

(class_declaration name: (identifier) @name) @definition.class
(class name: (identifier) @name) @definition.class
(field_definition
  property: [(property_identifier) (private_property_identifier)] @name
  value: [(arrow_function) (function_expression)]) @definition.method
(field_definition
  property: [(property_identifier) (private_property_identifier)] @name) @definition.field
(field_definition
  property: [(property_identifier) (private_property_identifier)] @annotated
  value: (new_expression constructor: (_) @declared.type))

(class_heritage [(identifier) @name
                 (member_expression object: (_) @qualifier property: (property_identifier) @name)]
  @reference.inherit)

(jsx_opening_element name: (identifier) @name) @reference.call
(jsx_self_closing_element name: (identifier) @name) @reference.call

(formal_parameters (identifier) @local.definition)
(formal_parameters (assignment_pattern left: (identifier) @local.definition))
(arrow_function parameter: (identifier) @local.definition)

; a name used as a value: an identifier where the grammar wants an expression (as in
; python-tags.scm), and the uses that are no expression there (a decorator, a JSX tag's
; namespace); the names being declared (`const x = require(…)`,
; a function expression's own name) and parameters are bindings, not uses
(primary_expression/identifier) @reference.other
(decorator (identifier) @reference.other)
(decorator (member_expression object: (identifier) @reference.other))
(decorator (call_expression function: (identifier) @reference.other))
(decorator (call_expression function: (member_expression object: (identifier) @reference.other)))
(jsx_opening_element name: (member_expression object: (identifier) @reference.other))
(jsx_self_closing_element name: (member_expression object: (identifier) @reference.other))
