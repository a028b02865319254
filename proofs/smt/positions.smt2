; verispec certificate: positions
; obligation: positions: After a round that committed a+1 tokens, query row r of the next round sits at absolute position L+a+r (the new pending token at L'-1).
; convention: absolute positions L-1+row (docs/explanation/index-conventions.md#positions)
; this query asserts the preconditions and the negated property: unsat means the obligation holds
; written by z3 5.4.1
(set-info :status unsat)
(declare-fun L () Int)
(declare-fun accepted () Int)
(declare-fun row () Int)
(define-fun t1 () Int (+ L accepted))
(assert (>= L 1))
(assert (>= accepted 0))
(assert (>= row 0))
(assert (not (= (+ (- (+ t1 1) 1) row) (+ t1 row))))
(check-sat)
