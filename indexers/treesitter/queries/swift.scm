; Definitions for the chunker (see python.scm for the capture convention).
; class_declaration covers class, struct, enum, actor and extension (named by the type it
; extends, so its functions are "Type.method").

(class_declaration name: (type_identifier) @name) @definition.class

(class_declaration name: (user_type (type_identifier) @name)) @definition.class

(protocol_declaration name: (type_identifier) @name) @definition.class

(function_declaration name: (simple_identifier) @name) @definition.function

(protocol_function_declaration name: (simple_identifier) @name) @definition.function

(init_declaration "init" @name) @definition.method

(deinit_declaration "deinit" @name) @definition.method
