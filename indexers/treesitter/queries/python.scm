; Definitions for the chunker. Capture convention (every language):
;   @definition.function   a function (becomes a method when its parent is a class)
;   @definition.method     a method (also at top level, e.g. Go methods with a receiver)
;   @definition.class      a class-like container: class, struct, interface, enum, trait, impl
;   @definition.namespace  a namespace/module: chunk kind "class", but functions inside stay
;                          functions (any other @definition.<x> counts as a class)
;   @name                  required; the definition's name (qualified by its parents with ".")
;   @receiver              optional; prefixes the name ("Receiver.Method")
; Comments, decorators, attributes and annotations directly above are attached by the chunker.

(class_definition
  name: (identifier) @name) @definition.class

(function_definition
  name: (identifier) @name) @definition.function
