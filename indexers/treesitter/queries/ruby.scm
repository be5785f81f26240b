; Definitions for the chunker (see python.scm for the capture convention).

(module
  name: [(constant) (scope_resolution)] @name) @definition.class

(class
  name: [(constant) (scope_resolution)] @name) @definition.class

(method
  name: (_) @name) @definition.function

(singleton_method
  name: (_) @name) @definition.method
