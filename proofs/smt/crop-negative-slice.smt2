; verispec certificate: crop-negative-slice
; obligation: crop: After accepting a of gamma drafts the target cache keeps exactly L+a entries: the prefix, the pending token and the accepted drafts, and not the rejected draft.
; convention: keys[:-k] with k entries to remove (k may be 0) (huggingface/transformers #47433)
; this query asserts the preconditions and the negated property: sat means a counterexample exists
; written by z3 5.4.1
(set-info :status sat)
(declare-fun L () Int)
(declare-fun gamma () Int)
(declare-fun accepted () Int)
(define-fun t1 () Int (- (- gamma accepted)))
(define-fun t2 () Int (+ L gamma))
(define-fun t3 () Int (+ t2 t1))
(assert (>= L 1))
(assert (>= gamma 0))
(assert (>= accepted 0))
(assert (<= accepted gamma))
(assert (not (= (ite (>= t1 0) (ite (<= t1 t2) t1 t2) (ite (>= t3 0) t3 0)) (+ L accepted))))
(check-sat)
