; verispec certificate: crop-plus-one
; obligation: crop: After accepting a of gamma drafts the target cache keeps exactly L+a entries: the prefix, the pending token and the accepted drafts, and not the rejected draft.
; convention: crop to L + accepted + 1 (docs/explanation/index-conventions.md#crops)
; this query asserts the preconditions and the negated property: sat means a counterexample exists
; written by z3 5.4.1
(set-info :status sat)
(declare-fun L () Int)
(declare-fun gamma () Int)
(declare-fun accepted () Int)
(define-fun t1 () Int (+ L accepted))
(assert (>= L 1))
(assert (>= gamma 0))
(assert (>= accepted 0))
(assert (<= accepted gamma))
(assert (not (= (+ t1 1) t1)))
(check-sat)
