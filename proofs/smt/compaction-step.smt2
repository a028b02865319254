; verispec certificate: compaction-step
; obligation: compaction-step: Inductive step: accepted rows r(0)=0 < r(1) < ... satisfy r(j) >= j, so every copy moves KV down (dst <= src), for paths of any length.
; convention: dst = L-1+j, src = L-1+r[j] (EAGLE/Medusa update_inference_inputs)
; this query asserts the preconditions and the negated property: unsat means the obligation holds
; written by z3 5.4.1
(set-info :status unsat)
(declare-fun L () Int)
(declare-fun j () Int)
(declare-fun r (Int) Int)
(define-fun t1 () Int (r j))
(define-fun t2 () Int (+ j 1))
(define-fun t3 () Int (r t2))
(define-fun t4 () Int (- L 1))
(assert (>= L 1))
(assert (>= j 0))
(assert (>= t1 j))
(assert (> t3 t1))
(assert (not (and (>= t3 t2) (<= (+ t4 t2) (+ t4 t3)))))
(check-sat)
