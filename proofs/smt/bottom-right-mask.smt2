; verispec certificate: bottom-right-mask
; obligation: visibility: In a verify pass (gamma+1 queries, L+gamma keys, contiguous cache) query row r sees key j exactly when j's position is at most the query's position L-1+r.
; convention: bottom-right causal: key <= row + Sk - Sq (FlashAttention >= 2.1, xformers FromBottomRight)
; this query asserts the preconditions and the negated property: unsat means the obligation holds
; written by z3 5.4.1
(set-info :status unsat)
(declare-fun L () Int)
(declare-fun gamma () Int)
(declare-fun row () Int)
(declare-fun key () Int)
(define-fun t1 () Int (+ L gamma))
(assert (>= L 1))
(assert (>= gamma 0))
(assert (>= row 0))
(assert (<= row gamma))
(assert (>= key 0))
(assert (< key t1))
(assert (not (= (<= key (- (+ row t1) (+ gamma 1))) (<= key (+ (- L 1) row)))))
(check-sat)
