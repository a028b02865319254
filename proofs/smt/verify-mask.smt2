; verispec certificate: verify-mask
; obligation: visibility: In a verify pass (gamma+1 queries, L+gamma keys, contiguous cache) query row r sees key j exactly when j's position is at most the query's position L-1+r.
; convention: verispec.smt.index.visible (position causality) (docs/explanation/index-conventions.md#the-verify-pass)
; this query asserts the preconditions and the negated property: unsat means the obligation holds
; written by z3 5.4.1
(set-info :status unsat)
(declare-fun L () Int)
(declare-fun gamma () Int)
(declare-fun row () Int)
(declare-fun key () Int)
(define-fun t1 () Bool (<= key (+ (- L 1) row)))
(assert (>= L 1))
(assert (>= gamma 0))
(assert (>= row 0))
(assert (<= row gamma))
(assert (>= key 0))
(assert (< key (+ L gamma)))
(assert (not (= t1 t1)))
(check-sat)
