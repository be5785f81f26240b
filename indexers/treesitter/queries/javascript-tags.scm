; Tags for JavaScript (see python-tags.scm for the capture convention).
; inherits: ecmascript-tags

(class_declaration name: (identifier) @name) @definition.class
(class name: (identifier) @name) @definition.class
(field_definition
  property: [(property_identifier) (private_property_identifier)] @name
  value: [(arrow_function) (function_expression)]) @definition.method
(field_definition
  property: [(property_identifier) (private_property_identifier)] @name) @definition.field

(class_heritage [(identifier) @name
                 (member_expression object: (_) @qualifier property: (property_identifier) @name)]
  @reference.inherit)

(jsx_opening_element name: (identifier) @name) @reference.call
(jsx_self_closing_element name: (identifier) @name) @reference.call

(formal_parameters (identifier) @local.definition)
(formal_parameters (assignment_pattern left: (identifier) @local.definition))
(formal_parameters (rest_pattern (identifier) @local.definition))
(formal_parameters (object_pattern (shorthand_property_identifier_pattern) @local.definition))
(arrow_function parameter: (identifier) @local.definition)
