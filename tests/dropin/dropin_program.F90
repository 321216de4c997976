! An ordinary Fortran MPI program, written without hycc: the Fortran evidence for libhycc_mpi.so.
! Built twice: with `use mpi` (mpif.h's bindings) and, with -DHYCC_F08, with `use mpi_f08`. It
! names its communicators after the parallel dimensions, runs the intercepted collectives on
! REAL data (in place and out of place; an allgather nonblocking; a reduce-scatter and an allgather,
! blocking and nonblocking, with counts one apart) and point-to-point messages
! (blocking, nonblocking and persistent; synchronous and ready sends too; probed ones),
! plus calls the library must leave alone, and, as dropin_program.c does,
!   - writes every result, as raw bytes, to PREFIX.rankR (compared bit for bit across runs);
!   - prints, on rank 0, the largest error of each call against the exact result (computed in
!     double from every rank's inputs), relative to the largest exact value;
!   - exits with 1 if a call the library must not change is not exact, or if a REAL call's
!     relative error exceeds BOUND.
! Usage: dropin_program_fortran PREFIX BOUND
#ifdef HYCC_F08
#define COMM_T type(MPI_Comm)
#define REQUEST_T type(MPI_Request)
#define MESSAGE_T type(MPI_Message)
#define STATUS_T type(MPI_Status)
#define STATUSES_T(n) type(MPI_Status) :: statuses(n)
#define SOURCE_OF(s) s%MPI_SOURCE
#define TAG_OF(s) s%MPI_TAG
#define STATUS_OF(a, k) a(k)
#else
#define COMM_T integer
#define REQUEST_T integer
#define MESSAGE_T integer
#define STATUS_T integer, dimension(MPI_STATUS_SIZE)
#define STATUSES_T(n) integer :: statuses(MPI_STATUS_SIZE, n)
#define SOURCE_OF(s) s(MPI_SOURCE)
#define TAG_OF(s) s(MPI_TAG)
#define STATUS_OF(a, k) a(:, k)
#endif
program dropin_program_fortran
#ifdef HYCC_F08
  use mpi_f08
#else
  use mpi
#endif
  implicit none
  integer, parameter :: n = 300000
  integer :: rank, nranks, ierr, failures, unit, per, root, i, j, next, prev, count, total
  double precision :: bound
  character(len=4096) :: prefix, arg
  COMM_T :: dp, tp, pp, zero
  real, allocatable :: x(:), y(:), all(:), s(:), v(:), ps(:), pv(:)
  double precision, allocatable :: e(:), ev(:)
  integer, allocatable :: ix(:), iy(:), counts(:), displs(:)
  REQUEST_T :: requests(2), persistent(2)
  MESSAGE_T :: message
  integer :: index, outcount, completed, indices(2)
  logical :: flag
  STATUS_T :: st
  STATUSES_T(2)

  failures = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  if (command_argument_count() /= 2) then
    if (rank == 0) print '(a)', 'usage: dropin_program_fortran PREFIX BOUND'
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end if
  call get_command_argument(1, prefix)
  call get_command_argument(2, arg)
  read (arg, *) bound
  write (arg, '(i0)') rank
  open (newunit=unit, file=trim(prefix)//'.rank'//trim(arg), access='stream', &
        form='unformatted', status='replace')

  call named_dup('dp', dp)
  call named_dup('tp', tp)
  call named_dup('pp', pp)
  call named_dup('zero', zero)
  per = n / nranks
  allocate (x(n), y(n + 10), all(per * nranks), s(per * nranks), e(n))

  ! Reductions.
  call inputs(rank, 0, x)
  call sum_of_inputs(0, e)
  call MPI_Allreduce(x, y, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check('allreduce world', y, e, n, .false.)
  y(1:n) = x
  call MPI_Allreduce(MPI_IN_PLACE, y, n, MPI_REAL, MPI_SUM, dp, ierr)
  call check('allreduce dp in place', y, e, n, .false.)
  call MPI_Allreduce(x, y, n, MPI_REAL, MPI_SUM, tp, ierr)
  call check('allreduce tp', y, e, n, .false.)
  ! Not for hycc: MPI_MAX, and integers; exact.
  call MPI_Allreduce(x, y, n, MPI_REAL, MPI_MAX, dp, ierr)
  do i = 1, n
    e(i) = -huge(1.0d0)
    do j = 0, nranks - 1
      e(i) = max(e(i), dble(input(j, i - 1)))
    end do
  end do
  call check('allreduce dp max', y, e, n, .true.)
  allocate (ix(n), iy(n))
  ix = [(mod(i, 1000) + rank, i = 1, n)]
  call MPI_Allreduce(ix, iy, n, MPI_INTEGER, MPI_SUM, dp, ierr)
  count = 0
  do i = 1, n
    if (iy(i) /= nranks * mod(i, 1000) + nranks * (nranks - 1) / 2) count = count + 1
  end do
  if (count /= 0) failures = failures + 1
  if (rank == 0) print '(a, i0)', '        allreduce dp integer wrong elements ', count

  call inputs(rank, 0, all)
  call sum_of_inputs(per * rank, e(1:per))
  call MPI_Reduce_scatter_block(all, y, per, MPI_REAL, MPI_SUM, zero, ierr)
  call check('reduce_scatter zero', y, e, per, .false.)
  call MPI_Reduce_scatter_block(MPI_IN_PLACE, all, per, MPI_REAL, MPI_SUM, zero, ierr)
  call check('reduce_scatter zero in place', all, e, per, .false.)

  ! Movements.
  call inputs(rank, 0, x(1:per))
  do j = 0, nranks - 1
    do i = 1, per
      e(j * per + i) = dble(input(j, i - 1))
    end do
  end do
  call MPI_Allgather(x, per, MPI_REAL, all, per, MPI_REAL, zero, ierr)
  call check('allgather zero', all, e, per * nranks, .false.)
  all = 0
  all(rank * per + 1:(rank + 1) * per) = x(1:per)
  call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, per, MPI_REAL, zero, ierr)
  call check('allgather zero in place', all, e, per * nranks, .false.)
  all = 0
  call MPI_Iallgather(x, per, MPI_REAL, all, per, MPI_REAL, zero, requests(1), ierr)
  call MPI_Wait(requests(1), MPI_STATUS_IGNORE, ierr)
  call check('iallgather zero', all, e, per * nranks, .false.)

  ! Vector variants: counts one apart (the longer shards first) of n + nranks - 1 elements.
  total = n + nranks - 1
  allocate (counts(nranks), displs(nranks), v(total), ev(total))
  do j = 0, nranks - 1
    counts(j + 1) = total / nranks
    if (j < mod(total, nranks)) counts(j + 1) = counts(j + 1) + 1
    displs(j + 1) = sum(counts(1:j))
  end do
  call inputs(rank, 0, v)
  call sum_of_inputs(displs(rank + 1), ev(1:counts(rank + 1)))
  call MPI_Reduce_scatter(v, y, counts, MPI_REAL, MPI_SUM, zero, ierr)
  call check('reduce_scatter v zero', y, ev, counts(rank + 1), .false.)
  call inputs(rank, 0, x(1:counts(rank + 1)))
  do j = 0, nranks - 1
    do i = 1, counts(j + 1)
      ev(displs(j + 1) + i) = dble(input(j, i - 1))
    end do
  end do
  call MPI_Allgatherv(x, counts(rank + 1), MPI_REAL, v, counts, displs, MPI_REAL, zero, ierr)
  call check('allgatherv zero', v, ev, total, .false.)
  v = 0
  call MPI_Iallgatherv(x, counts(rank + 1), MPI_REAL, v, counts, displs, MPI_REAL, zero, &
                       requests(1), ierr)
  call MPI_Wait(requests(1), MPI_STATUS_IGNORE, ierr)
  call check('iallgatherv zero', v, ev, total, .false.)

  root = mod(1, nranks)
  if (rank == root) then
    call inputs(root, 0, y(1:n))
  else
    call inputs(nranks + 7, 0, y(1:n))
  end if
  do i = 1, n
    e(i) = dble(input(root, i - 1))
  end do
  call MPI_Bcast(y, n, MPI_REAL, root, pp, ierr)
  call check('bcast pp', y, e, n, .false.)

  ! Alltoall: block j of rank r holds input(r, j * per + i).
  call inputs(rank, 0, s)
  do j = 0, nranks - 1
    do i = 1, per
      e(j * per + i) = dble(input(j, rank * per + i - 1))
    end do
  end do
  call MPI_Alltoall(s, per, MPI_REAL, all, per, MPI_REAL, tp, ierr)
  call check('alltoall tp', all, e, per * nranks, .false.)
  call MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, s, per, MPI_REAL, tp, ierr)
  call check('alltoall tp in place', s, e, per * nranks, .false.)

  ! Point to point on pp, round the ring.
  if (nranks > 1) then
    next = mod(rank + 1, nranks)
    prev = mod(rank + nranks - 1, nranks)
    call inputs(rank, 0, x)
    do i = 1, n
      e(i) = dble(input(prev, i - 1))
    end do
    call MPI_Sendrecv(x, n, MPI_REAL, next, 3, y, n + 10, MPI_REAL, prev, 3, pp, st, ierr)
    call MPI_Get_count(st, MPI_REAL, count, ierr)
    call expect_status('sendrecv', st, count, prev, 3)
    call check('sendrecv pp', y, e, n, .false.)

    y = 0
    if (mod(rank, 2) == 0) then
      call MPI_Send(x, n, MPI_REAL, next, 4, pp, ierr)
      call MPI_Recv(y, n + 10, MPI_REAL, prev, 4, pp, st, ierr)
    else
      call MPI_Recv(y, n + 10, MPI_REAL, prev, 4, pp, st, ierr)
      call MPI_Send(x, n, MPI_REAL, next, 4, pp, ierr)
    end if
    call MPI_Get_count(st, MPI_REAL, count, ierr)
    call expect_status('recv', st, count, prev, 4)
    call check('send/recv pp', y, e, n, .false.)

    y = 0
    call MPI_Irecv(y, n + 10, MPI_REAL, MPI_ANY_SOURCE, 5, pp, requests(1), ierr)
    call MPI_Isend(x, n, MPI_REAL, next, 5, pp, requests(2), ierr)
    call MPI_Waitall(2, requests, statuses, ierr)
    call MPI_Get_count(STATUS_OF(statuses, 1), MPI_REAL, count, ierr)
    call expect_status('irecv', STATUS_OF(statuses, 1), count, prev, 5)
    if (requests(1) /= MPI_REQUEST_NULL .or. requests(2) /= MPI_REQUEST_NULL) then
      print '(a, i0, a)', 'rank ', rank, ': requests not MPI_REQUEST_NULL after MPI_Waitall'
      failures = failures + 1
    end if
    call check('isend/irecv pp', y, e, n, .false.)

    ! The synchronous and ready modes, each into a receive posted before the barrier.
    do j = 1, 3
      y = 0
      call MPI_Irecv(y, n + 10, MPI_REAL, prev, 10 + j, pp, requests(1), ierr)
      call MPI_Barrier(pp, ierr)
      requests(2) = MPI_REQUEST_NULL
      if (j == 1) then
        call MPI_Issend(x, n, MPI_REAL, next, 11, pp, requests(2), ierr)
      else if (j == 2) then
        call MPI_Irsend(x, n, MPI_REAL, next, 12, pp, requests(2), ierr)
      else
        call MPI_Rsend(x, n, MPI_REAL, next, 13, pp, ierr)
      end if
      call MPI_Waitall(2, requests, statuses, ierr)
      call MPI_Get_count(STATUS_OF(statuses, 1), MPI_REAL, count, ierr)
      call expect_status('issend/irsend/rsend', STATUS_OF(statuses, 1), count, prev, 10 + j)
      call check('issend/irsend/rsend pp', y, e, n, .false.)
    end do

    ! A message whose length the receiver learns from MPI_Probe and MPI_Get_count.
    y = 0
    call MPI_Isend(x, n - 1000 * (rank + 1), MPI_REAL, next, 14, pp, requests(2), ierr)
    call MPI_Probe(prev, 14, pp, st, ierr)
    call MPI_Get_count(st, MPI_REAL, count, ierr)
    if (count /= n - 1000 * (prev + 1) .or. SOURCE_OF(st) /= prev .or. TAG_OF(st) /= 14) then
      print '(a, i0, 3(a, i0))', 'rank ', rank, ': MPI_Probe count ', count, ' source ', &
        SOURCE_OF(st), ' tag ', TAG_OF(st)
      failures = failures + 1
      count = n - 1000 * (prev + 1)
    end if
    call MPI_Recv(y, count, MPI_REAL, prev, 14, pp, st, ierr)
    call MPI_Wait(requests(2), st, ierr)
    call check('probe/recv pp', y, e, count, .false.)

    ! The same with the matched probe: MPI_Mprobe, MPI_Get_count, MPI_Mrecv.
    y = 0
    call MPI_Isend(x, n - 1000 * (rank + 1), MPI_REAL, next, 17, pp, requests(2), ierr)
    call MPI_Mprobe(prev, 17, pp, message, st, ierr)
    call MPI_Get_count(st, MPI_REAL, count, ierr)
    if (count /= n - 1000 * (prev + 1) .or. SOURCE_OF(st) /= prev .or. TAG_OF(st) /= 17) then
      print '(a, i0, 3(a, i0))', 'rank ', rank, ': MPI_Mprobe count ', count, ' source ', &
        SOURCE_OF(st), ' tag ', TAG_OF(st)
      failures = failures + 1
      count = n - 1000 * (prev + 1)
    end if
    call MPI_Mrecv(y, count, MPI_REAL, message, st, ierr)
    if (message /= MPI_MESSAGE_NULL) then
      print '(a, i0, a)', 'rank ', rank, ': the message is not MPI_MESSAGE_NULL after MPI_Mrecv'
      failures = failures + 1
    end if
    call MPI_Wait(requests(2), st, ierr)
    call check('mprobe/mrecv pp', y, e, count, .false.)

    ! The other completions: MPI_Waitany (1-based indices), MPI_Testall, MPI_Waitsome.
    y = 0
    call MPI_Irecv(y, n + 10, MPI_REAL, prev, 6, pp, requests(1), ierr)
    call MPI_Isend(x, n, MPI_REAL, next, 6, pp, requests(2), ierr)
    do j = 1, 2
      call MPI_Waitany(2, requests, index, st, ierr)
      if (index == 1) then
        call MPI_Get_count(st, MPI_REAL, count, ierr)
        call expect_status('waitany', st, count, prev, 6)
      else if (index /= 2) then
        print '(a, i0, a, i0)', 'rank ', rank, ': MPI_Waitany index ', index
        failures = failures + 1
      end if
    end do
    call check('isend/irecv waitany pp', y, e, n, .false.)

    y = 0
    call MPI_Irecv(y, n + 10, MPI_REAL, prev, 7, pp, requests(1), ierr)
    call MPI_Isend(x, n, MPI_REAL, next, 7, pp, requests(2), ierr)
    flag = .false.
    do while (.not. flag)
      call MPI_Testall(2, requests, flag, statuses, ierr)
    end do
    call MPI_Get_count(STATUS_OF(statuses, 1), MPI_REAL, count, ierr)
    call expect_status('testall', STATUS_OF(statuses, 1), count, prev, 7)
    call check('isend/irecv testall pp', y, e, n, .false.)

    y = 0
    call MPI_Irecv(y, n + 10, MPI_REAL, prev, 8, pp, requests(1), ierr)
    call MPI_Isend(x, n, MPI_REAL, next, 8, pp, requests(2), ierr)
    completed = 0
    do while (completed < 2)
      call MPI_Waitsome(2, requests, outcount, indices, statuses, ierr)
      do j = 1, outcount
        if (indices(j) == 1) then
          call MPI_Get_count(STATUS_OF(statuses, j), MPI_REAL, count, ierr)
          call expect_status('waitsome', STATUS_OF(statuses, j), count, prev, 8)
        end if
      end do
      completed = completed + outcount
    end do
    call check('isend/irecv waitsome pp', y, e, n, .false.)

    ! Persistent requests, two rounds of new data: a persistent send into a plain MPI_Irecv and a
    ! persistent receive of a plain MPI_Isend; MPI_Start, then MPI_Startall; the handles stay.
    allocate (ps(n), pv(n))
    call MPI_Send_init(ps, n, MPI_REAL, next, 15, pp, persistent(1), ierr)
    call MPI_Recv_init(pv, n, MPI_REAL, prev, 16, pp, persistent(2), ierr)
    do j = 1, 2
      ps = x * real(j)
      do i = 1, n
        e(i) = dble(input(prev, i - 1) * real(j))
      end do
      y = 0
      pv = 0
      call MPI_Irecv(y, n, MPI_REAL, prev, 15, pp, requests(1), ierr)
      if (j == 1) then
        call MPI_Start(persistent(1), ierr)
        call MPI_Start(persistent(2), ierr)
      else
        call MPI_Startall(2, persistent, ierr)
      end if
      call MPI_Isend(ps, n, MPI_REAL, next, 16, pp, requests(2), ierr)
      call MPI_Waitall(2, persistent, statuses, ierr)
      call MPI_Get_count(STATUS_OF(statuses, 2), MPI_REAL, count, ierr)
      call expect_status('recv_init', STATUS_OF(statuses, 2), count, prev, 16)
      call MPI_Waitall(2, requests, MPI_STATUSES_IGNORE, ierr)
      if (persistent(1) == MPI_REQUEST_NULL .or. persistent(2) == MPI_REQUEST_NULL) then
        print '(a, i0, a)', 'rank ', rank, ': a persistent request became MPI_REQUEST_NULL'
        failures = failures + 1
      end if
      call check('send_init pp', y, e, n, .false.)
      call check('recv_init pp', pv, e, n, .false.)
    end do
    call MPI_Request_free(persistent(1), ierr)
    call MPI_Request_free(persistent(2), ierr)
  end if

  close (unit)
  call MPI_Allreduce(MPI_IN_PLACE, failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (failures == 0) then
      print '(a)', 'dropin_program_fortran: OK'
    else
      print '(a)', 'dropin_program_fortran: FAILED'
    end if
  end if
  call MPI_Finalize(ierr)
  if (failures /= 0) stop 1

contains

  ! Rank r's input element i (from 0): smooth, not exactly representable in bf16; the C
  ! program's values.
  real function input(r, i)
    integer, intent(in) :: r, i
    input = real(sin(0.001d0 * dble(i) + dble(r)) + 0.01d0 * dble(r))
  end function

  subroutine inputs(r, offset, v)
    integer, intent(in) :: r, offset
    real, intent(out) :: v(:)
    integer :: k
    do k = 1, size(v)
      v(k) = input(r, offset + k - 1)
    end do
  end subroutine

  subroutine sum_of_inputs(offset, v)
    integer, intent(in) :: offset
    double precision, intent(out) :: v(:)
    integer :: k, r
    v = 0
    do r = 0, nranks - 1
      do k = 1, size(v)
        v(k) = v(k) + dble(input(r, offset + k - 1))
      end do
    end do
  end subroutine

  subroutine named_dup(name, c)
    character(len=*), intent(in) :: name
    COMM_T, intent(out) :: c
    call MPI_Comm_dup(MPI_COMM_WORLD, c, ierr)
    call MPI_Comm_set_name(c, name, ierr)
  end subroutine

  ! Records a result: its bytes go to the output file, its error against `exact` to stdout.
  subroutine check(what, got, exact, m, must_be_exact)
    character(len=*), intent(in) :: what
    real, intent(in) :: got(:)
    double precision, intent(in) :: exact(:)
    integer, intent(in) :: m
    logical, intent(in) :: must_be_exact
    double precision :: err, scale, rel
    logical :: bad
    err = maxval(abs(dble(got(1:m)) - exact(1:m)))
    scale = maxval(abs(exact(1:m)))
    rel = err
    if (scale > 0) rel = err / scale
    call MPI_Allreduce(MPI_IN_PLACE, rel, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
    write (unit) got(1:m)
    if (must_be_exact) then
      bad = rel /= 0
    else
      bad = rel > bound
    end if
    if (rank == 0) then
      if (bad) then
        print '(a28, a, es10.3, a)', what, ' relative error ', rel, '  TOO LARGE'
      else
        print '(a28, a, es10.3)', what, ' relative error ', rel
      end if
    end if
    if (bad) failures = failures + 1
  end subroutine

  subroutine expect_status(what, status, got_count, source, tag)
    character(len=*), intent(in) :: what
    STATUS_T, intent(in) :: status
    integer, intent(in) :: got_count, source, tag
    if (got_count /= n .or. SOURCE_OF(status) /= source .or. TAG_OF(status) /= tag) then
      print '(a, i0, 2a, 3(a, i0))', 'rank ', rank, ': ', what, ' status count ', got_count, &
        ' source ', SOURCE_OF(status), ' tag ', TAG_OF(status)
      failures = failures + 1
    end if
  end subroutine

end program
