; verispec certificate: compaction-ascending
; obligation: compaction-ascending: Copying the accepted path's KV in ascending order reads every source before it is overwritten (all accepted paths of up to 9 nodes).
; convention: copy in ascending order (EAGLE/Medusa; FlexFlow commit_tokens_kernel)
; case: path of 4
; this query asserts the preconditions and the negated property: unsat means the obligation holds
; written by z3 5.4.1
(set-info :status unsat)
(declare-fun L () Int)
(declare-fun r0 () Int)
(declare-fun r1 () Int)
(declare-fun r2 () Int)
(declare-fun r3 () Int)
(define-fun t1 () Int (- L 1))
(define-fun t2 () Int (+ t1 0))
(define-fun t3 () Int (+ t1 1))
(define-fun t4 () Int (+ t1 r2))
(define-fun t5 () Int (+ t1 2))
(define-fun t6 () Int (+ t1 r3))
(define-fun t7 () Int (+ t1 3))
(assert (>= L 1))
(assert (= r0 0))
(assert (> r1 r0))
(assert (> r2 r1))
(assert (> r3 r2))
(assert (not (and (= t2 t2) (distinct t2 (+ t1 r1)) (= t3 t3) (distinct t2 t4) (distinct t3 t4) (= t5 t5) (distinct t2 t6) (distinct t3 t6) (distinct t5 t6) (= t7 t7))))
(check-sat)
