#include "object_table.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_of(const git_oid *id, size_t slot_count) {
    uint64_t hash;
    memcpy(&hash, id->id, sizeof hash);  // object ids are uniformly distributed
    return (size_t)hash & (slot_count - 1);
}

long table_find(const object_table *table, const git_oid *id) {
    if (table->slot_count == 0) return -1;
    for (size_t slot = slot_of(id, table->slot_count);; slot = (slot + 1) & (table->slot_count - 1)) {
        int32_t index = table->slots[slot];
        if (index < 0) return -1;
        if (git_oid_equal(&table->objects[index].id, id)) return index;
    }
}

static void place(object_table *table, size_t index) {
    size_t slot = slot_of(&table->objects[index].id, table->slot_count);
    while (table->slots[slot] >= 0) slot = (slot + 1) & (table->slot_count - 1);
    table->slots[slot] = (int32_t)index;
}

static int grow(object_table *table) {
    size_t capacity = table->capacity ? table->capacity * 2 : 64;
    size_t slot_count = capacity * 2;
    int32_t *slots = malloc(slot_count * sizeof *slots);
    if (!slots) return -1;
    table_object *objects = realloc(table->objects, capacity * sizeof *objects);
    if (!objects) {
        free(slots);
        return -1;
    }
    table->objects = objects;
    table->capacity = capacity;
    memset(slots, 0xff, slot_count * sizeof *slots);
    free(table->slots);
    table->slots = slots;
    table->slot_count = slot_count;
    for (size_t i = 0; i < table->count; i++) place(table, i);
    return 0;
}

int table_insert(object_table *table, const table_object *object) {
    if (table_find(table, &object->id) >= 0) return 0;
    if (table->count == table->capacity && grow(table) < 0) return -1;
    table->objects[table->count] = *object;
    place(table, table->count);
    table->count++;
    return 1;
}

void table_clear(object_table *table) {
    for (size_t i = 0; i < table->count; i++) free(table->objects[i].data);
    table->count = 0;
    if (table->slots) memset(table->slots, 0xff, table->slot_count * sizeof *table->slots);
}

void table_free(object_table *table) {
    for (size_t i = 0; i < table->count; i++) free(table->objects[i].data);
    free(table->objects);
    free(table->slots);
    memset(table, 0, sizeof *table);
}
