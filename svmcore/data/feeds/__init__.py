"""Feeds: where a run's training rows come from, one module each, all yielding the one batch
type (``rows.Rows``, compute-ready) for ``batches(batch_size, epoch)``.

- ``memory.InMemory``: the rows held as one block (memory mode), or memory-mapped (memmap: an
  in-memory block whose arrays are ``np.memmap``, read in windows of pieces when shuffled,
  its pages released behind the cursor);
- ``stream.Streamed``: the text parsed a block at a time (``source_rows``: the run's parser,
  or generated data through their text copy), through the shuffle buffer, written to the spill
  in its first pass and read back from it in shuffled windows later; a reader thread with
  ``threads`` > 1;
- a data-parallel run's shards (``stream.from_spill`` over each shard's spill, on each Dask worker).

Every feed knows ``n_rows``, its ``spill`` (or None), whether a reader thread is on
(``reader_thread``) and the bytes of rows it holds (``nbytes``), and gives a transform its
first rows (``head``). The test rows are ``held_out``'s: on disk, read a slice at a time.
"""
