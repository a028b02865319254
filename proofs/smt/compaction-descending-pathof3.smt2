; verispec certificate: compaction-descending
; obligation: compaction-descending: Copying the accepted path's KV in descending order reads every source before it is overwritten.
; convention: copy in descending order (SafeAILab/EAGLE copies the accepted path in ascending order; docs/explanation/index-conventions.md#tree-verify-passes)
; case: path of 3
; this query asserts the preconditions and the negated property: sat means a counterexample exists
; written by z3 5.4.1
(set-info :status sat)
(declare-fun L () Int)
(declare-fun r0 () Int)
(declare-fun r1 () Int)
(declare-fun r2 () Int)
(define-fun t1 () Int (- L 1))
(define-fun t2 () Int (+ t1 2))
(define-fun t3 () Int (+ t1 1))
(define-fun t4 () Int (+ t1 r0))
(define-fun t5 () Int (+ t1 0))
(assert (>= L 1))
(assert (= r0 0))
(assert (> r1 r0))
(assert (> r2 r1))
(assert (not (and (= t2 t2) (distinct t2 (+ t1 r1)) (= t3 t3) (distinct t2 t4) (distinct t3 t4) (= t5 t5))))
(check-sat)
