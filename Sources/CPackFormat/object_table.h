// An in-memory table of git objects by id (open addressing over an array of objects), shared by
// the capture backend and the object memo. Not thread-safe: callers lock.
#ifndef TIDEMARK_OBJECT_TABLE_H
#define TIDEMARK_OBJECT_TABLE_H

#include <git2.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    git_oid id;
    git_object_t type;
    void *data;
    size_t length;
} table_object;

typedef struct {
    table_object *objects;
    size_t count, capacity;
    int32_t *slots;  // open addressing over object indexes, -1 when empty
    size_t slot_count;
} object_table;

/// The index of the object `id` in `table`, or -1.
long table_find(const object_table *table, const git_oid *id);

/// Adds `object` (the table takes over its data). Returns 1 when added, 0 when the table already
/// holds the id (the caller keeps the data), -1 when out of memory (the caller keeps the data).
int table_insert(object_table *table, const table_object *object);

/// Frees every object's data and empties the table, keeping its allocations.
void table_clear(object_table *table);

/// Frees every object's data and the table's allocations.
void table_free(object_table *table);

#endif
