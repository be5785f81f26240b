; Definitions for the chunker (see python.scm for the capture convention).
; Companion objects have no name: their functions are the class's ("Ledger.create").
; Extension functions are named after the type they extend ("String.shout").

(class_declaration (type_identifier) @name) @definition.class

(object_declaration (type_identifier) @name) @definition.class

(function_declaration
  (receiver_type [(user_type (type_identifier) @receiver)
                  (nullable_type (user_type (type_identifier) @receiver))])
  (simple_identifier) @name) @definition.function

(function_declaration
  (simple_identifier) @name) @definition.function
