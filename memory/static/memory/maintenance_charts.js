// The maintenance reports page's charts (templates/admin/memory/memorymaintenancereport/
// change_list.html): data from the json_script element, drawn with the vendored Chart.js.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("maintenance-charts-data").textContent);
  // Axes titled in plain words.
  const axes = (x, y) => ({
    x: { title: { display: true, text: x } },
    y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: y } },
  });
  const growth = document.getElementById("memory-growth-chart");
  if (growth && window.Chart) {
    const names = {
      long_term: "Long-term memories",
      conversations: "Conversation messages",
      short_term: "Short-term entries",
      knowledge: "Knowledge items",
    };
    new window.Chart(growth, {
      type: "line",
      data: {
        labels: data.growth.labels,
        datasets: Object.entries(data.growth.series).map(([tier, values]) => ({
          label: names[tier] || tier,
          data: values,
          tension: 0.2,
        })),
      },
      // Small legend boxes and a few unrotated day labels: four tiers' legend and thirty
      // rotated dates left the plot itself a sliver in a third of the page.
      options: {
        animation: false,
        plugins: { legend: { labels: { boxWidth: 12, font: { size: 11 } } } },
        scales: {
          ...axes("Day", "Memories stored"),
          x: {
            title: { display: true, text: "Day" },
            ticks: { maxRotation: 0, autoSkip: true, maxTicksLimit: 4 },
          },
        },
      },
    });
  }
  const sizes = document.getElementById("cluster-sizes-chart");
  if (sizes && window.Chart) {
    new window.Chart(sizes, {
      type: "bar",
      data: {
        labels: data.clusters.labels,
        datasets: [{ label: "Members", data: data.clusters.sizes }],
      },
      options: {
        animation: false,
        plugins: { legend: { display: false } },
        scales: axes("Group of near-duplicate memories", "Memories in the group"),
      },
    });
  }
  const pending = document.getElementById("pending-changes-chart");
  if (pending && window.Chart) {
    new window.Chart(pending, {
      type: "bar",
      data: {
        labels: data.pending.labels,
        datasets: [{ label: "Pending changes", data: data.pending.counts }],
      },
      options: {
        animation: false,
        plugins: { legend: { display: false } },
        scales: axes("Waiting for", "Changes waiting"),
      },
    });
  }
})();
