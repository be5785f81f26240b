; Definitions for the chunker (see python.scm for the capture convention).

(class_definition name: (identifier) @name) @definition.class

(object_definition name: (identifier) @name) @definition.class

(trait_definition name: (identifier) @name) @definition.class

(enum_definition name: (identifier) @name) @definition.class

(function_definition name: (identifier) @name) @definition.function

(function_declaration name: (identifier) @name) @definition.function
